#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: scatter-gather sort
doc: |
  Sort a text file in parallel: `split` cuts it into line-aligned parts (one
  scatter element per entry of `parts`), `sort` sorts each part on
  preemptible nodes, and `merge` merges the sorted parts on a reliable node.
  The job order fixes the scatter width (the length of `parts`).

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}
  StepInputExpressionRequirement: {}

inputs:
  text:
    type: File
    doc: The text to sort.
  parts:
    type: int[]
    doc: Part numbers 1..N; N is the number of parts.

outputs:
  sorted:
    type: File
    outputSource: merge/sorted

steps:
  split:
    doc: Cut out one part of the text (cheap; inferred preemptible since it is scattered).
    run: split-part.cwl
    scatter: part
    in:
      text: text
      part: parts
      nparts:
        source: parts
        valueFrom: $(self.length)
    out: [chunk]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 512

  sort:
    doc: Sort one part; replicable work, so it may run on spot nodes.
    run: sort-chunk.cwl
    scatter: chunk
    in:
      chunk: split/chunk
    out: [sorted]
    hints:
      plastic:Plasticity:
        vcpus: 2
        vram: 2048
        preempt: true

  merge:
    doc: Merge the sorted parts; the single point of the gather, kept on a reliable node.
    run: merge-sorted.cwl
    in:
      parts: sort/sorted
    out: [sorted]
    hints:
      plastic:Plasticity:
        vcpus: 2
        vram: 4096
        preempt: false
