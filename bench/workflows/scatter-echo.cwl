#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
doc: |
  The overhead benchmark's workflow: one trivial task per element of `items`
  (echo the item into a file), then nothing else. Every element is its own
  Toil job, so wall time per task is what a batch system adds to a job.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}

inputs:
  items: int[]

outputs:
  echoed:
    type: File[]
    outputSource: echo/out

steps:
  echo:
    scatter: item
    in:
      item: items
    out: [out]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 256
        preempt: true
    run:
      class: CommandLineTool
      baseCommand: echo
      inputs:
        item:
          type: int
          inputBinding: {position: 1}
      outputs:
        out:
          type: stdout
      stdout: item.txt
