cwlVersion: v1.2
class: CommandLineTool
inputs:
  p:
    type: pair-type.yml#pair
outputs:
  out: stdout
stdout: pair.txt
baseCommand: echo
arguments: [$(inputs.p.left), $(inputs.p.right)]
requirements:
  InlineJavascriptRequirement: {}
  SchemaDefRequirement:
    types:
      - $import: pair-type.yml
