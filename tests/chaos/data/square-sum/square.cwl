#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Sleep, then print "i f(i)" with f(i) = (i * i * 7919) mod 10007.
baseCommand: [sh, -c, 'sleep "$0"; echo "$1 $(( $1 * $1 * 7919 % 10007 ))"']
inputs:
  seconds:
    type: int
    inputBinding:
      position: 1
  item:
    type: int
    inputBinding:
      position: 2
stdout: part.txt
outputs:
  part: stdout
