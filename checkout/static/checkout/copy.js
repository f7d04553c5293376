// Copy buttons of the payer's pages: shown only where this script runs (the text stays selectable without
// it). A button copies the whole value of the element it names (data-value, else its text) and says so.
(function () {
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.getElementById(button.dataset.copy), said = document.getElementById("copied");
      var text = source.dataset.value || source.textContent.trim();
      function done(ok) {
        if (said) said.textContent = ok ? button.dataset.copied + " " + text : said.dataset.failed;
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      } else {
        var range = document.createRange(), selection = window.getSelection();
        range.selectNodeContents(source); selection.removeAllRanges(); selection.addRange(range);
        done(document.execCommand("copy"));
      }
    });
  });
})();
