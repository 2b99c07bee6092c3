cwlVersion: v1.2
class: Workflow
doc: $import of a whole tool and of a hint.
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
inputs: []
outputs: []
steps:
  imported:
    run:
      $import: imported-tool.cwl
    in: []
    out: []
    hints:
      - $import: imported-hint.yml
