cwlVersion: v1.0
class: CommandLineTool
doc: A v1.0 tool without ResourceRequirement (cwltool's v1.0 default RAM is 1024 MiB).
baseCommand: cat
inputs:
  files:
    type: File[]
    inputBinding: {position: 1}
stdout: all.txt
outputs:
  out: stdout
