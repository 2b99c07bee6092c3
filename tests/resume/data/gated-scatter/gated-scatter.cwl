#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: gated scatter
doc: |
  The slow scatter of tests/watch/data/slow-scatter with a gate instead of a sleep: the scattered
  steps run until the test creates the file `gate`, so they are still running when a resumed run
  decides what to do with them, however long the resume took to start.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}

inputs:
  items:
    type: int[]
  gate:
    type: string
    doc: The file whose existence lets the scattered steps end (an absolute path).

outputs:
  joined:
    type: File
    outputSource: gather/joined

steps:
  work:
    run: gated-line.cwl
    scatter: item
    in:
      item: items
      gate: gate
    out: [line]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: true

  gather:
    run: ../../../watch/data/slow-scatter/cat-lines.cwl
    in:
      parts: work/line
    out: [joined]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: false
