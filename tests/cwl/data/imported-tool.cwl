cwlVersion: v1.2
class: CommandLineTool
requirements:
  ResourceRequirement:
    coresMin: 3
    ramMin: 1536
baseCommand: "true"
inputs: []
outputs: []
