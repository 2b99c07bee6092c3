#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Write the K-th of N line-aligned parts of a text file (GNU `split -n l/K/N`).
baseCommand: split
arguments:
  - -n
  - l/$(inputs.part)/$(inputs.nparts)
  - $(inputs.text.path)
inputs:
  text: File
  part: int
  nparts: int
stdout: part-$(inputs.part).txt
outputs:
  chunk: stdout
