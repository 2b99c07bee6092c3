#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: |
  Sleep, then print "i f(i)" with f(i) = (i * i * 7919) mod 10007.  Given a hold (a path), first wait
  while that file exists: a test keeps the spot agents busy for as long as it needs them busy
  (tests/chaos/test_chaos_runs.py).
baseCommand:
  - sh
  - -c
  - 'if [ "$1" = --hold ]; then while [ -e "$2" ]; do sleep 0.1; done; shift 2; fi;
     sleep "$1"; echo "$2 $(( $2 * $2 * 7919 % 10007 ))"'
  - square
inputs:
  hold:
    type: string?
    inputBinding:
      prefix: --hold
      position: 0
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
