cwlVersion: v1.2
class: Workflow
doc: Workflow-level plastic hints apply to steps without their own.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
hints:
  plastic:Plasticity:
    vcpus: 2
    vram: 3000
    preempt: true
inputs: []
outputs: []
steps:
  inherit:
    run: float-rr-tool.cwl
    in: []
    out: []
  own:
    run: float-rr-tool.cwl
    in: []
    out: []
    requirements:
      plastic:Plasticity:
        vcpus: 5
        preempt: false
