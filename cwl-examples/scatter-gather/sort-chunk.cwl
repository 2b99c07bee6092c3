#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Sort the lines of one file (byte order).
baseCommand: sort
requirements:
  EnvVarRequirement:
    envDef:
      LC_ALL: C
hints:
  ResourceRequirement:
    coresMin: 1
    ramMin: 1024
inputs:
  chunk:
    type: File
    inputBinding:
      position: 1
stdout: $(inputs.chunk.nameroot).sorted.txt
outputs:
  sorted: stdout
