cwlVersion: v1.2
class: Workflow
requirements:
  ScatterFeatureRequirement: {}
inputs:
  xs: int[]
outputs:
  out:
    type: File[]
    outputSource: big/out
steps:
  big:
    run:
      class: CommandLineTool
      baseCommand: [echo]
      inputs:
        x: {type: int, inputBinding: {position: 1}}
      outputs:
        out: stdout
      hints:
        ResourceRequirement: {coresMin: 16, ramMin: 32000}
    in: {x: xs}
    scatter: x
    out: [out]
    hints:
      plastic:
        preempt: 2
