cwlVersion: v1.0
class: Workflow
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  ScatterFeatureRequirement: {}
inputs:
  names: string[]
outputs:
  all:
    type: File
    outputSource: gather/out
steps:
  greet:
    run: echo-v10.cwl
    scatter: name
    in:
      name: names
    out: [out]
  gather:
    run: cat-v10.cwl
    in:
      files: greet/out
    out: [out]
    requirements:
      plastic:Plasticity:
        preempt: false
