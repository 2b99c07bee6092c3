cwlVersion: v1.2
class: CommandLineTool
doc: Echo whatever it is given.
baseCommand: echo
inputs:
  a: {type: Any?, inputBinding: {position: 1}}
  b: {type: Any?, inputBinding: {position: 2}}
  c: {type: Any?, inputBinding: {position: 3}}
stdout: out.txt
outputs:
  out: stdout
