cwlVersion: v1.2
class: Workflow
doc: Preempt inference - scattered steps default to preemptible.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  ScatterFeatureRequirement: {}
inputs:
  xs: int[]
outputs: []
steps:
  scattered:
    run: any-tool.cwl
    scatter: a
    in:
      a: xs
    out: [out]
  scattered_reliable:
    run: any-tool.cwl
    scatter: a
    in:
      a: xs
    out: [out]
    hints:
      plastic:Plasticity:
        preempt: false
  single:
    run: any-tool.cwl
    in:
      a: scattered/out
      b: scattered_reliable/out
    out: [out]
