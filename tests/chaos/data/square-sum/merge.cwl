#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Concatenate the parts in order into merged.txt; write its SHA-256 to checksum.txt.
baseCommand: [sh, -c, 'cat "$@" > merged.txt && sha256sum merged.txt | cut -d" " -f1 > checksum.txt', merge]
inputs:
  parts:
    type: File[]
    inputBinding:
      position: 1
outputs:
  merged:
    type: File
    outputBinding:
      glob: merged.txt
  checksum:
    type: File
    outputBinding:
      glob: checksum.txt
