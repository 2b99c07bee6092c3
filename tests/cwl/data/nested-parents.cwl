cwlVersion: v1.2
class: Workflow
doc: A scattered inline subworkflow between two steps, with a side branch.
requirements:
  ScatterFeatureRequirement: {}
  SubworkflowFeatureRequirement: {}
inputs:
  xs: int[]
outputs: []
steps:
  prepare:
    run: any-tool.cwl
    in: {a: xs}
    out: [out]
  outer:
    run:
      class: Workflow
      inputs:
        p: File
        x: int
      outputs:
        o:
          type: File
          outputSource: second/out
      steps:
        first:
          run: any-tool.cwl
          in: {a: p, b: x}
          out: [out]
        second:
          run: any-tool.cwl
          in: {a: first/out}
          out: [out]
        side:
          run: any-tool.cwl
          in: {a: x}
          out: [out]
    scatter: x
    in: {p: prepare/out, x: xs}
    out: [o]
  finish:
    run: any-tool.cwl
    in: {a: outer/o}
    out: [out]
