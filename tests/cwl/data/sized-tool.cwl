cwlVersion: v1.2
class: CommandLineTool
doc: Resources from parameter references (no JavaScript).
requirements:
  ResourceRequirement:
    coresMin: $(inputs.n)
    ramMax: $(inputs.mib)
baseCommand: echo
inputs:
  n: int
  mib: int
outputs: []
