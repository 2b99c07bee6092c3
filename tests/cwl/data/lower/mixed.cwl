cwlVersion: v1.2
class: Workflow
doc: A v1.0 tool without ResourceRequirement inside a v1.2 workflow.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
inputs:
  files: File[]
outputs: []
steps:
  cat:
    run: ../cat-v10.cwl
    in:
      files: files
    out: [out]
    hints:
      plastic:Plasticity:
        vcpus: 2
  cat_again:
    run: ../cat-v10.cwl
    in:
      files: files
    out: [out]
