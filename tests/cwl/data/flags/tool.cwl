cwlVersion: v1.2
class: CommandLineTool
doc: Every kind of input a flag can give.
inputs:
  reads: File
  refs: {type: "File[]", default: []}
  outdir_name: {type: string, default: out}
  threads: int
  ratio: {type: float, default: 0.5}
  verbose: {type: boolean, default: false}
  n: {type: int, default: 1}
  tags: {type: "string[]", default: []}
  opts:
    type:
      type: record
      fields:
        depth: int
        mode: string
  either: ["null", File, int]
  genome: Directory?
baseCommand: "true"
outputs: []
