#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Count the occurrences of each line of a sorted file (`uniq -c`).
baseCommand: [uniq, -c]
requirements:
  EnvVarRequirement:
    envDef:
      LC_ALL: C
inputs:
  sorted:
    type: File
    inputBinding:
      position: 1
stdout: $(inputs.sorted.nameroot).counts.txt
outputs:
  counts: stdout
