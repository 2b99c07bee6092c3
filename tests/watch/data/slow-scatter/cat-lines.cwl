#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Concatenate the lines, in order.
baseCommand: cat
inputs:
  parts:
    type: File[]
    inputBinding:
      position: 1
stdout: joined.txt
outputs:
  joined: stdout
