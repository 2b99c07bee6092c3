cwlVersion: v1.2
class: Workflow
doc: |
  Names CWL users share between objects, which cwltool runs with a "previously
  defined" warning and its packing used to fold into one another: a step named
  like a workflow output (`tally`), a subworkflow whose step is named like its
  output (`count`), and a tool whose input and output share a name (`words`).
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  SubworkflowFeatureRequirement: {}
  ScatterFeatureRequirement: {}
inputs:
  texts: string[]
outputs:
  tally:
    type: File
    outputSource: tally/out
  counts:
    type: File[]
    outputSource: per_text/count
steps:
  per_text:
    run: shared-names-sub.cwl
    scatter: text
    in:
      text: texts
    out: [count]
    hints:
      plastic:Plasticity: {vcpus: 1, vram: 300, preempt: 2}
  tally:
    run:
      class: CommandLineTool
      inputs:
        files:
          type: File[]
          inputBinding: {}
      outputs:
        out: stdout
      stdout: tally.txt
      baseCommand: cat
    in:
      files: per_text/count
    out: [out]
