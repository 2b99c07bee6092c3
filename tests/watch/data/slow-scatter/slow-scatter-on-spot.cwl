#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: slow scatter on spot
doc: |
  A scatter of slow steps (`sleep`, then one line each) that only spot nodes can hold, gathered by `cat` on a
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
        # more memory than the core node's (c5.large, 4096 MiB): every scattered task runs on a spot agent
        # (slow-scatter.cwl's 256 MiB let the core hold them: when the spot agent's offers came late on a
        # loaded machine all three ran there, and tests/watch/test_run_notices.py had nothing to interrupt)
        vram: 4608
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
