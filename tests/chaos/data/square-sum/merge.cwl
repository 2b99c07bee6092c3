#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: |
  Concatenate the parts in order into merged.txt; write its SHA-256 to checksum.txt.  Given a gate (a
  path), first wait until that file exists: a test holds the run's last step until it has seen what it
  waits for (tests/run/test_elastic_e2e.py).
baseCommand:
  - sh
  - -c
  - 'if [ "$1" = --gate ]; then while [ ! -e "$2" ]; do sleep 0.1; done; shift 2; fi;
     cat "$@" > merged.txt && sha256sum merged.txt | cut -d" " -f1 > checksum.txt'
  - merge
inputs:
  gate:
    type: string?
    inputBinding:
      prefix: --gate
      position: 0
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
