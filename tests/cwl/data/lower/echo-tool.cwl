cwlVersion: v1.2
class: CommandLineTool
baseCommand: echo
inputs:
  msg:
    type: string
    inputBinding: {position: 1}
stdout: out.txt
outputs:
  out: stdout
