#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Merge already sorted files into one sorted file (byte order).
baseCommand: [sort, -m]
requirements:
  EnvVarRequirement:
    envDef:
      LC_ALL: C
inputs:
  parts:
    type: File[]
    inputBinding:
      position: 1
stdout: sorted.txt
outputs:
  sorted: stdout
