#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
doc: |
  One step of known usage for the report's asked-against-used figures: `burn` keeps one core busy for
  `seconds` of CPU time and touches `mib` MiB, while its annotation asks for 2 vcpus and 3 GiB.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
inputs:
  seconds: float
  mib: int
outputs:
  done:
    type: File
    outputSource: burn/out
steps:
  burn:
    run: burn.cwl
    in:
      seconds: seconds
      mib: mib
    out: [out]
    hints:
      plastic:Plasticity:
        vcpus: 2
        vram: 3072
        preempt: false
