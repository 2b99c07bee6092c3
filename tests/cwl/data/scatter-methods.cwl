cwlVersion: v1.2
class: Workflow
doc: Scatter widths for each method, chained scatters, valueFrom, when.
requirements:
  ScatterFeatureRequirement: {}
  StepInputExpressionRequirement: {}
  InlineJavascriptRequirement: {}
inputs:
  a: int[]
  b: string[]
  c: string[]
outputs: []
steps:
  dot:
    run: any-tool.cwl
    scatter: [a, b]
    scatterMethod: dotproduct
    in: {a: a, b: b}
    out: [out]
  flat:
    run: any-tool.cwl
    scatter: [a, c]
    scatterMethod: flat_crossproduct
    in: {a: a, c: c}
    out: [out]
  nested:
    run: any-tool.cwl
    scatter: [a, c]
    scatterMethod: nested_crossproduct
    in: {a: a, c: c}
    out: [out]
  chained:
    run: any-tool.cwl
    scatter: a
    in: {a: dot/out}
    out: [out]
  sized:
    run: sized-tool.cwl
    in:
      n:
        source: a
        valueFrom: $(self.length)
      mib:
        source: c
        valueFrom: $(self.length * 150)
    out: []
  conditional:
    run: any-tool.cwl
    when: $(inputs.a.length > 1)
    in: {a: a}
    out: [out]
