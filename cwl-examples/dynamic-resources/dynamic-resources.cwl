#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: memory from input size
doc: |
  Sort several texts; each sort asks for RAM in proportion to the size of its
  input (ResourceRequirement ramMin is an expression over `inputs.text.size`),
  so the job order decides the sizes.  The merge's RAM depends on the sorted
  files, which exist only at run time: plastic reports it as dynamic.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}
  InlineJavascriptRequirement: {}

inputs:
  texts: File[]

outputs:
  sorted:
    type: File
    outputSource: merge/sorted

steps:
  sort:
    run: sort-sized.cwl
    scatter: text
    in:
      text: texts
    out: [sorted]
    hints:
      plastic:Plasticity:
        preempt: true

  merge:
    run: merge-sized.cwl
    in:
      parts: sort/sorted
    out: [sorted]
    hints:
      plastic:Plasticity:
        preempt: false
