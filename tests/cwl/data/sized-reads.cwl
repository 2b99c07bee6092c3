cwlVersion: v1.2
class: CommandLineTool
doc: RAM from the size of a file of the job order (2.5 MiB per KiB, rounded up).
requirements:
  InlineJavascriptRequirement: {}
  ResourceRequirement:
    coresMin: $(inputs.threads)
    ramMin: $(inputs.reads.size / 1024 * 2.5)
baseCommand: wc
inputs:
  reads:
    type: File
    inputBinding: {position: 1}
  threads:
    type: int
    default: 2
stdout: count.txt
outputs:
  count: stdout
