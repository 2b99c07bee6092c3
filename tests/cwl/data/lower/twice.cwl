cwlVersion: v1.2
class: Workflow
doc: |
  One subworkflow file called by two steps, and a step whose name clashes with
  the flattened `a/first` once slashes become underscores.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  SubworkflowFeatureRequirement: {}
inputs:
  msg:
    type: string
    default: hello
outputs:
  a_out:
    type: File
    outputSource: a/out
  b_out:
    type: File
    outputSource: b/out
steps:
  a:
    run: pair.cwl
    in:
      msg: msg
    out: [out]
    hints:
      plastic:Plasticity:
        vram: 600
  b:
    run: pair.cwl
    in:
      msg: msg
    out: [out]
    hints:
      plastic:Plasticity:
        vram: 900
        preempt: 1
  a_first:
    run: echo-tool.cwl
    in:
      msg: msg
    out: [out]
