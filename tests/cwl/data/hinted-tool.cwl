cwlVersion: v1.2
class: CommandLineTool
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
hints:
  plastic:Plasticity:
    vcpus: 4
    vram: 4096
    preempt: true
    instanceType: m5.xlarge
  ResourceRequirement:
    coresMin: 16
    ramMin: 65536
baseCommand: "true"
inputs: []
outputs: []
