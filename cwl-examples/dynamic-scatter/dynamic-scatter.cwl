#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: dynamic-width scatter sort
doc: |
  The most common shape of a scientific workflow: `split` cuts a file into parts, `sort` runs once per
  part (a scatter whose width is the number of files split made, known only at run time), `merge`
  gathers the sorted parts on a reliable node.  `plastic plan` cannot know the width (it assumes 1);
  an elastic `plastic run` grows the cluster when the sort tasks are queued.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}

inputs:
  text:
    type: File
    doc: The text to sort.
  parts:
    type: int
    doc: How many parts to cut it into.

outputs:
  sorted:
    type: File
    outputSource: merge/sorted

steps:
  split:
    doc: Cut the text into parts (one task; reliable).
    run: split-lines.cwl
    in:
      text: text
      parts: parts
    out: [chunks]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 512
        preempt: false

  sort:
    doc: Sort one part; replicable work for spot nodes, moved to reliable nodes after 2 preemptions.
    run: ../scatter-gather/sort-chunk.cwl
    scatter: chunk
    in:
      chunk: split/chunks
    out: [sorted]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 1024
        preempt: 2

  merge:
    doc: Merge the sorted parts on a reliable node.
    run: ../scatter-gather/merge-sorted.cwl
    in:
      parts: sort/sorted
    out: [sorted]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 1024
        preempt: false
