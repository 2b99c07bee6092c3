#!/usr/bin/env cwl-runner
cwlVersion: v1.2
class: CommandLineTool
doc: One replayed trace task - sleep its (scaled) runtime, then print its name.
baseCommand: [sh, -c, 'sleep "$0"; echo "$1"']
inputs:
  seconds:
    type: float
    inputBinding:
      position: 1
  name:
    type: string
    inputBinding:
      position: 2
  after:
    type: File[]
    default: []
    doc: The parents' outputs (only to order the steps as the trace's DAG).
stdout: done.txt
outputs:
  done: stdout
