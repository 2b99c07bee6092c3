#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Wait until the file GATE exists (the test makes it), then print "item N".
baseCommand: [sh, -c, 'while [ ! -e "$0" ]; do sleep 0.2; done; echo "item $1"']
inputs:
  gate:
    type: string
    inputBinding:
      position: 1
  item:
    type: int
    inputBinding:
      position: 2
stdout: line.txt
outputs:
  line: stdout
