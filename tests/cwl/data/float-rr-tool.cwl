cwlVersion: v1.2
class: CommandLineTool
doc: Fractional resources (allowed since v1.2) are rounded up.
requirements:
  ResourceRequirement:
    coresMin: 2.5
    ramMin: 1000.5
baseCommand: "true"
inputs: []
outputs: []
