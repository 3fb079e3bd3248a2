// The Script pane (templates/browsers/panes/script.html): the code editor (CodeMirror 5, vendored in
// static/vendor/), Ctrl+Enter to run, the error's line marked, a recent script loaded into the editor, and
// the Stop form following the executor the run uses. Without JavaScript the textarea and links still work.
(function () {
  'use strict';
  let editor = null;

  function enhance(root) {
    const area = root.querySelector('textarea[data-script-editor]');
    if (!area || area.dataset.enhanced || typeof CodeMirror === 'undefined') return;
    area.dataset.enhanced = 'true';
    const form = area.closest('form');
    editor = CodeMirror.fromTextArea(area, {
      mode: 'javascript',
      lineNumbers: true,
      matchBrackets: true,
      indentUnit: 2,
      tabSize: 2,
      viewportMargin: Infinity,
      extraKeys: {
        'Ctrl-Enter': () => form.requestSubmit(),
        'Cmd-Enter': () => form.requestSubmit(),
      },
    });
    // htmx reads the textarea: keep it current.
    editor.on('change', () => editor.save());
    const result = document.getElementById('script-result');
    const line = result && Number(result.dataset.errorLine);
    if (line && line <= editor.lineCount()) {
      editor.addLineClass(line - 1, 'background', 'script-error-line');
      editor.scrollIntoView({ line: line - 1, ch: 0 }, 80);
    }
    const executor = form.querySelector('input[name="executor"]');
    const stop = document.querySelector('[data-script-stop-executor]');
    if (executor && stop) {
      const follow = () => { stop.value = executor.value.trim() || 'default'; };
      executor.addEventListener('input', follow);
      follow();
    }
  }

  document.addEventListener('click', (event) => {
    const link = event.target.closest('[data-recent-script]');
    if (!link || !editor) return;
    const source = document.querySelector(`template[data-recent-code="${link.dataset.recentScript}"]`);
    if (!source) return;
    event.preventDefault();
    editor.setValue(source.content.textContent);
    editor.focus();
  });
  document.addEventListener('DOMContentLoaded', () => enhance(document));
  document.addEventListener('htmx:afterSwap', () => enhance(document));
})();
