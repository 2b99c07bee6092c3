#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: square-sum (chaos tests)
doc: |
  A wide scatter of slow steps on spot nodes, each writing one line "i f(i)", merged in order and
  checksummed on a reliable node.  The output is fully determined by the items, so a run that lost
  or repeated work shows it.

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
  gate:
    type: string?
    doc: A path; the merge waits until it exists (none by default).
  hold:
    type: string?
    doc: A path; a square that starts while it exists waits until it is gone (none by default).

outputs:
  merged:
    type: File
    outputSource: merge/merged
  checksum:
    type: File
    outputSource: merge/checksum

steps:
  square:
    run: square.cwl
    scatter: item
    in:
      item: items
      seconds: seconds
      hold: hold
    out: [part]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: true

  merge:
    run: merge.cwl
    in:
      parts: square/part
      gate: gate
    out: [merged, checksum]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: false
