#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
doc: Sort one sample's words, then count each distinct word.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

hints:
  # applies to the inner steps that do not say otherwise ("workflow hint")
  plastic:Plasticity:
    vram: 768

inputs:
  sample: File

outputs:
  counts:
    type: File
    outputSource: count/counts

steps:
  sort:
    run: sort-words.cwl
    in:
      words: sample
    out: [sorted]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 1024

  count:
    run: count-words.cwl
    in:
      sorted: sort/sorted
    out: [counts]
    hints:
      plastic:Plasticity:
        vcpus: 1
        preempt: 2   # preemptible, moved to on-demand after 2 preemptions
