cwlVersion: v1.2
class: Workflow
doc: Where each value comes from.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
  arv: "http://arvados.org/cwl#"
hints:
  plastic:Plasticity:
    preempt: 3
inputs: []
outputs: []
steps:
  override:          # step hint beats the tool's own hint; the rest comes from the tool's hint
    run: hinted-tool.cwl
    in: []
    out: []
    hints:
      plastic:Plasticity:
        vcpus: 8
  floats:            # ResourceRequirement with floats; preempt from the workflow hint
    run: float-rr-tool.cwl
    in: []
    out: []
  maxonly:           # coresMax / ramMax alone, given on the step
    run:
      class: CommandLineTool
      baseCommand: "true"
      inputs: []
      outputs: []
    in: []
    out: []
    hints:
      ResourceRequirement:
        coresMax: 6
        ramMax: 700
  arv_only:          # arv:UsePreemptible on the step beats the workflow hint
    run:
      class: CommandLineTool
      baseCommand: "true"
      inputs: []
      outputs: []
    in: []
    out: []
    hints:
      arv:UsePreemptible:
        usePreemptible: false
  both:              # plastic:Plasticity beats arv:UsePreemptible on the same level
    run:
      class: CommandLineTool
      baseCommand: "true"
      inputs: []
      outputs: []
    in: []
    out: []
    hints:
      arv:UsePreemptible:
        usePreemptible: false
      plastic:Plasticity:
        preempt: true
