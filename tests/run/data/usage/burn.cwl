#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: Keep one core busy for `seconds` of CPU time with `mib` MiB touched, then write done.txt.
baseCommand: [python3, -c]
arguments:
  - position: 0
    valueFrom: |
      import sys, time
      b = bytearray(int(sys.argv[2]) * 2**20)
      b[::4096] = b"x" * len(b[::4096])
      t = time.process_time()
      while time.process_time() - t < float(sys.argv[1]):
          pass
      open("done.txt", "w").write("ok")
inputs:
  seconds:
    type: float
    inputBinding: {position: 1}
  mib:
    type: int
    inputBinding: {position: 2}
outputs:
  out:
    type: File
    outputBinding: {glob: done.txt}
