#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Sleep, then print "item N".
baseCommand: [sh, -c, 'sleep "$0"; echo "item $1"']
inputs:
  seconds:
    type: int
    inputBinding:
      position: 1
  item:
    type: int
    inputBinding:
      position: 2
stdout: line.txt
outputs:
  line: stdout
