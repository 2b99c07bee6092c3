#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Concatenate files in order.
baseCommand: cat
inputs:
  parts:
    type: File[]
    inputBinding:
      position: 1
stdout: report.txt
outputs:
  report: stdout
