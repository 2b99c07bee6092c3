cwlVersion: v1.1
class: Workflow
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
  arv: "http://arvados.org/cwl#"
inputs:
  msg: string
outputs: []
steps:
  first:
    run: echo-v11.cwl
    in:
      msg: msg
    out: [out]
    requirements:
      plastic:Plasticity:
        preempt: 4
  second:
    run: echo-v11.cwl
    in:
      msg:
        source: first/out
        valueFrom: $(self.basename)
    out: [out]
    requirements:
      StepInputExpressionRequirement: {}
    hints:
      arv:UsePreemptible:
        usePreemptible: true
      plastic:Plasticity:
        vcpus: 1
