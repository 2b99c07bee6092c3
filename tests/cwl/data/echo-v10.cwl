cwlVersion: v1.0
class: CommandLineTool
doc: A v1.0 tool with only the maxima of ResourceRequirement.
requirements:
  ResourceRequirement:
    coresMax: 3
    ramMax: 300
baseCommand: echo
inputs:
  name:
    type: string
    inputBinding: {position: 1}
stdout: greeting.txt
outputs:
  out: stdout
