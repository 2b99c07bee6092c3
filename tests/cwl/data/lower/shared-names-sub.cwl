cwlVersion: v1.2
class: Workflow
inputs:
  text: string
outputs:
  count:
    type: File
    outputSource: count/out
steps:
  words:
    run: shared-names-tool.cwl
    in:
      words: text
    out: [words]
  count:
    run:
      class: CommandLineTool
      inputs:
        f: File
      outputs:
        out: stdout
      stdin: $(inputs.f.path)
      stdout: count.txt
      baseCommand: [wc, -w]
    in:
      f: words/words
    out: [out]
