cwlVersion: v1.2
class: Workflow
doc: Two echoes; called twice by twice.cwl.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  StepInputExpressionRequirement: {}
inputs:
  msg: string
outputs:
  out:
    type: File
    outputSource: second/out
steps:
  first:
    run: echo-tool.cwl
    in:
      msg: msg
    out: [out]
    hints:
      plastic:Plasticity:
        vcpus: 2
  second:
    run: echo-tool.cwl
    in:
      msg:
        source: first/out
        valueFrom: $(self.basename)
    out: [out]
