#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Sort lines in byte order.
baseCommand: sort
requirements:
  EnvVarRequirement:
    envDef:
      LC_ALL: C
inputs:
  words:
    type: File
    inputBinding:
      position: 1
stdout: $(inputs.words.nameroot).sorted.txt
outputs:
  sorted: stdout
