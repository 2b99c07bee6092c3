cwlVersion: v1.1
class: CommandLineTool
doc: plastic:Plasticity under the tool's own requirements (cwltool alone would refuse it).
$namespaces:
  plastic: "https://w3id.org/plastic/cwl#"
requirements:
  plastic:Plasticity:
    vcpus: 2
    vram: 2048
baseCommand: echo
inputs:
  msg:
    type: string
    inputBinding: {position: 1}
stdout: out.txt
outputs:
  out: stdout
