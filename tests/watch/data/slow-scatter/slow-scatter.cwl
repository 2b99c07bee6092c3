#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: slow scatter
doc: |
  A scatter of slow steps (`sleep`, then one line each) on spot nodes, gathered by `cat` on a
  reliable node: long enough for a spot notice to land while the scattered tasks run.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}

inputs:
  items:
    type: int[]
  seconds:
    type: int
    doc: How long each scattered step sleeps.

outputs:
  joined:
    type: File
    outputSource: gather/joined

steps:
  work:
    run: slow-line.cwl
    scatter: item
    in:
      item: items
      seconds: seconds
    out: [line]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: true

  gather:
    run: cat-lines.cwl
    in:
      parts: work/line
    out: [joined]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: false
