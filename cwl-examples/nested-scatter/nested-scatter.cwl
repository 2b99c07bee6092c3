#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: Workflow
label: word counts per sample
doc: |
  For each sample (a scatter over `samples`) run the two-step subworkflow
  `sample-stats.cwl` (sort, then count), then concatenate the per-sample counts.
  The inner steps are flattened to `per_sample/sort` and `per_sample/count`;
  they run once per sample.

$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"

requirements:
  ScatterFeatureRequirement: {}
  SubworkflowFeatureRequirement: {}

inputs:
  samples: File[]

outputs:
  report:
    type: File
    outputSource: gather/report

steps:
  per_sample:
    run: sample-stats.cwl
    scatter: sample
    in:
      sample: samples
    out: [counts]

  gather:
    run: concatenate.cwl
    in:
      parts: per_sample/counts
    out: [report]
    hints:
      plastic:Plasticity:
        vcpus: 1
        vram: 512
        preempt: false
