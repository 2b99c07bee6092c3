#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Sort a text; asks for 8 MiB of RAM per KiB of input (at least 64 MiB).
baseCommand: sort
requirements:
  InlineJavascriptRequirement: {}
  EnvVarRequirement:
    envDef:
      LC_ALL: C
  ResourceRequirement:
    coresMin: 1
    ramMin: $(Math.max(64, Math.ceil(inputs.text.size / 1024) * 8))
inputs:
  text:
    type: File
    inputBinding:
      position: 1
stdout: $(inputs.text.nameroot).sorted.txt
outputs:
  sorted: stdout
