// The demo storefront's own code: what an integrator writes around the agent.
(function () {
  var button = document.getElementById("buy");
  var status = document.getElementById("shop-status");
  function show(update) {
    if (update.status === "waiting" && typeof update.position === "number") {
      status.textContent = "You're number " + update.position + " in line…";
    } else if (update.status === "error") {
      status.textContent = "Reconnecting…";
    } else if (update.status === "held") {
      status.textContent = "Checking your connection; you keep your place…";
    }
  }
  button.addEventListener("click", function () {
    button.disabled = true;
    status.textContent = "Joining the line…";
    window.anteroom
      .enterQueue("demo", { apiKey: "pk_demo", onUpdate: show })
      .then(function (answer) {
        if (answer.status === "admitted") {
          location.assign("/demo/checkout?abq=" + encodeURIComponent(answer.token));
        } else {
          status.textContent = "The drop is not open right now.";
          button.disabled = false;
        }
      })
      .catch(function (error) {
        status.textContent = "Could not join the line (" + (error.code || error.name) + ").";
        button.disabled = false;
      });
  });
})();
