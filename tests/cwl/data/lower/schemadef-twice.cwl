cwlVersion: v1.2
class: Workflow
doc: One record type imported by the workflow and by its tool, which packing embeds once.
requirements:
  SchemaDefRequirement:
    types:
      - $import: pair-type.yml
inputs:
  p: pair-type.yml#pair
outputs:
  out:
    type: File
    outputSource: show/out
steps:
  show:
    run: pair-tool.cwl
    in:
      p: p
    out: [out]
