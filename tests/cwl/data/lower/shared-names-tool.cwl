cwlVersion: v1.2
class: CommandLineTool
inputs:
  words:
    type: string
    inputBinding: {}
outputs:
  words: stdout
stdout: words.txt
baseCommand: echo
