#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Merge sorted texts; asks for RAM in proportion to their total size.
baseCommand: [sort, -m]
requirements:
  InlineJavascriptRequirement: {}
  EnvVarRequirement:
    envDef:
      LC_ALL: C
  ResourceRequirement:
    coresMin: 2
    ramMin: |
      $(Math.max(128, Math.ceil(inputs.parts.reduce(function (total, f) { return total + f.size; }, 0) / 1024) * 4))
inputs:
  parts:
    type: File[]
    inputBinding:
      position: 1
stdout: sorted.txt
outputs:
  sorted: stdout
